"""pattern-gen: PyPTO pattern cards as YAML -> validated kernel plans -> kernels, goldens, tests, docs.

Data flows one way: YAML -> card models (``model``, ``loader``) -> catalogue (``catalogue``,
``checks``) -> kernel plan (``resolver``) -> rendered files (``codegen``) and docs (``docs``).
Generated kernels import only ``ptosim`` and numpy.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("pattern-gen")
except PackageNotFoundError:  # running from a source tree without an install
    __version__ = "0.1.0"

__all__ = ["__version__"]
