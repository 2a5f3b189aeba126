"""The exceptions of the autobatch module (raised by its C++ part too)."""


class AutobatchError(Exception):
    """Base class of every error autobatch raises."""


class CompileError(AutobatchError):
    """The program does not parse, verify or type-check.

    ``str(e)`` is the compiler's located message, as the CLI prints it;
    ``e.diagnostics`` lists each one as a Diagnostic (``file``, ``line``,
    ``column``, ``severity``, ``message``, ``rendered``).
    """

    def __init__(self, message, diagnostics=()):
        super().__init__(message)
        self.diagnostics = list(diagnostics)


class InputError(AutobatchError, ValueError):
    """Bad inputs or options: a missing or extra input, a dtype or shape the
    entry does not declare, batch sizes that differ, an unknown VM name...

    ``e.diagnostics`` lists the messages (empty when the check was made in
    Python).
    """

    def __init__(self, message, diagnostics=()):
        super().__init__(message)
        self.diagnostics = list(diagnostics)


class ExecutionError(AutobatchError, RuntimeError):
    """A runtime error stopped the run (docs/language.md, "Runtime errors"): integer division by zero,
    stack bound or max_steps exceeded, an index out of range, a Python
    primitive that raised...

    ``str(e)`` is the CLI's message; ``e.thread`` is the first failing thread
    (an index into the batch, or None when not about one thread),
    ``e.function`` and ``e.block`` where it failed, ``e.file``, ``e.line``,
    ``e.column`` the source position, ``e.message`` the bare reason and
    ``e.batch`` the batch size.
    """

    def __init__(self, message):
        super().__init__(message)
        self.message = message
        self.thread = None
        self.function = ""
        self.block = ""
        self.file = ""
        self.line = 0
        self.column = 0
        self.batch = 0
