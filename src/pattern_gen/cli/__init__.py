"""The ``pattern-gen`` command line (click). Thin: parse, call the library, print.

Exit codes: 0 ok, 1 a check failed (drift, a failing kernel), 2 bad input. Bad input prints one
line per problem (``file:line:col: message [code]``) and never a traceback.

Modules: ``app`` (the command group, which imports a command's module when the command runs),
``common`` (consoles, problems and exit codes, the catalogue), one module per command family:
``cards`` (list, show, validate, schema), ``instances`` (new, run, explain), ``generate``,
``site`` (docs build, docs serve), ``tune``, ``team`` (config, init, new-card); ``project`` reads
the project settings.
"""

from .app import main

__all__ = ["main"]
