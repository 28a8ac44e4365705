"""pattern-gen: PyPTO pattern cards as YAML -> validated kernel plans -> kernels, goldens, tests, docs.

Data flows one way: YAML -> card models (``model``, ``loader``) -> catalogue (``catalogue``,
``checks``) -> kernel plan (``resolver``) -> rendered files (``codegen``) and docs (``docs``).
Generated kernels import only ``ptosim`` and numpy.
"""

from importlib.metadata import PackageNotFoundError, version

#: the distribution's name on a package index. The command stays ``pattern-gen``; the index name
#: ``pattern-gen`` belongs to an unrelated 2013 project, so never install the tool by that name.
DISTRIBUTION = "pypto-pattern-gen"

try:
    __version__ = version(DISTRIBUTION)
except PackageNotFoundError:  # running from a source tree without an install
    __version__ = "0.1.0"

__all__ = ["DISTRIBUTION", "__version__"]
