"""The card schema: pydantic v2 models for atoms, skeletons, their flows and performance tables.

Every model forbids unknown keys, so a typo in a card is an error with a location rather than a
silently ignored field. The compute flow is data: a list of stages, each a list of ops from a
closed vocabulary (one model per op, discriminated by ``op``) or calls of other atoms. The JSON
Schema of ``Card`` (``pattern-gen schema``) is what editors validate card files against.

Modules: ``base`` (the strict model, dtypes, predicates, expressions, names), ``decls``
(parameters, inputs and outputs), ``ops`` (the op vocabulary), ``stages`` (stage items),
``performance`` (advice tables), ``cards`` (atoms, skeletons, constraints).
"""

# Every model and alias is re-exported: the rest of the package reads the vocabulary as ``model.X``.
from ...vocab.fields import (
    ALWAYS,
    DTYPES,
    PREDICATE_JSON_SCHEMA,
    CastModeName,
    DType,
    DTypeList,
    DTypeValue,
    ExprValue,
    Level,
    Name,
    Operand,
    ParamRef,
    Role,
    Scalar,
    Shape,
    Strict,
    Unit,
    When,
)
from ...vocab.ops import (
    OP_FAMILY,
    OP_MODELS,
    AssembleOp,
    BinaryOp,
    CompareOp,
    WhereOp,
    TopkOp,
    BufferOp,
    CallOp,
    CastOp,
    FullOp,
    MatmulOp,
    Op,
    ReduceOp,
    ReshapeOp,
    ScaledMmOp,
    ScatterUpdateOp,
    UnaryOp,
    ViewOp,
    op_tag,
)
from .cards import (
    AtomCard,
    Card,
    Constraint,
    ConstraintCatalogue,
    DimSpec,
    FlowUnit,
    LoopSpec,
    Refusal,
    SkeletonCard,
    SlotSpec,
    Upgrade,
    Variant,
)
from .decls import DeclCase, ParamSpec, TensorDecl, ToleranceRule
from .performance import (
    CachePolicyAdvice,
    CubeTile,
    OptionAdvice,
    Performance,
    TileAdvice,
)
from .regimes import DimBound, Regime
from .stages import Item, SlotItem, Stage, UseItem, item_tag

__all__ = [
    "DimBound",
    "Regime",
    "Card",
    "AtomCard",
    "SkeletonCard",
    "ParamSpec",
    "TensorDecl",
    "Stage",
    "UseItem",
    "SlotItem",
    "OP_MODELS",
    "OP_FAMILY",
    "DTYPES",
    "Constraint",
    "ConstraintCatalogue",
]
