"""pattern-gen: PyPTO pattern cards as YAML -> validated kernel plans -> kernels, goldens, tests, docs.

Data flows one way: YAML -> card models (``cards``) -> catalogue (``catalogue``) -> typed flow
(``flow``; ``checks`` validates every combination) -> kernel plan (``plan``) -> rendered files
(``emit``) -> written instances (``output``), with ``tune``, ``docs`` and the ``cli`` on top
(ARCHITECTURE.md draws the order; tests/architecture/test_layers.py enforces it). Generated kernels
import only ``ptosim`` and numpy.
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
