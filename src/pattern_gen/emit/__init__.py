"""Emission: a KernelPlan -> the files of its instance folder, through a code-generation target."""
