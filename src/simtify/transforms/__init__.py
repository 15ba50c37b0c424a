"""Passes over IR: layout propagation, nested (IREE-style) distribution, and the named
pipelines that chain them (`simtify.transforms.pipelines`)."""
