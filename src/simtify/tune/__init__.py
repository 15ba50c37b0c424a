"""Choosing reduction configs: IREE 3.12's heuristic reproduced, simtify's own, and a
tuner that searches the config space with a cost model and checks its best picks by
simulation.

- `problem`: the reduction a user names and the dispatch space IREE configures it in;
- `iree_heuristic`: IREE's `setReductionConfig` / TileAndFuse / Distribute choices;
- `heuristic`: simtify's rules (``--strategy simtify``);
- `model`: predicted time from counts (occupancy, waves, memory / cache / issue /
  latency), the roofline, and where the model is known to be wrong;
- `estimate` / `measure`: those counts from a config's plan, or from the simulator run
  on a few workgroups and scaled to the launch;
- `space` / `search`: the configs the tuner tries, ranking, parallel checking.
"""
