"""Planning: a request -> a frozen KernelPlan (coercion, resolution, tiling, options, naming)."""

from .kernel_plan import KernelPlan, Request, StagePlan, TensorPlan

__all__ = ["KernelPlan", "Request", "StagePlan", "TensorPlan"]
