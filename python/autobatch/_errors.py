"""The exceptions of the autobatch module (raised by its C++ part too)."""


class AutobatchError(Exception):
    """Base class of every error autobatch raises.

    ``e.file``, ``e.line``, ``e.column``: where in the program's source the
    error is (1-based, as ``str(e)`` shows them first: "fib.ab:5:23: ..."),
    or "", 0, 0 when it is about no place in the source (an input, an
    option).
    """

    def __init__(self, message):
        super().__init__(message)
        self.file = ""
        self.line = 0
        self.column = 0


def _locate(error, diagnostics):
    """Takes the place of the first diagnostic that has one (an error's
    before a note's)."""
    located = [d for d in diagnostics if d.file and d.line > 0]
    located.sort(key=lambda d: d.severity != "error")
    if located:
        d = located[0]
        error.file, error.line, error.column = d.file, d.line, d.column


class CompileError(AutobatchError):
    """The program does not parse, verify or type-check.

    ``str(e)`` is the compiler's located message, as the CLI prints it;
    ``e.file``, ``e.line``, ``e.column`` are the first error's place and
    ``e.diagnostics`` lists each message as a Diagnostic (``file``, ``line``,
    ``column``, ``severity``, ``message``, ``rendered``).
    """

    def __init__(self, message, diagnostics=()):
        super().__init__(message)
        self.diagnostics = list(diagnostics)
        _locate(self, self.diagnostics)


class InputError(AutobatchError, ValueError):
    """Bad inputs or options: a missing or extra input, a dtype or shape the
    entry does not declare, batch sizes that differ, an unknown VM name...

    ``e.diagnostics`` lists the messages (empty when the check was made in
    Python); ``e.file``, ``e.line``, ``e.column`` name a place in the source
    when one is at fault (else "", 0, 0).
    """

    def __init__(self, message, diagnostics=()):
        super().__init__(message)
        self.diagnostics = list(diagnostics)
        _locate(self, self.diagnostics)


class ExecutionError(AutobatchError, RuntimeError):
    """A runtime error stopped the run (docs/language.md, "Runtime errors"):
    integer division by zero, stack bound or max_steps exceeded, an index out of range, a Python
    primitive that raised or returned a value that does not fit its
    results...

    ``str(e)`` is the CLI's message, which starts with the source position
    "file:line:column:" (also ``e.file``, ``e.line``, ``e.column``);
    ``e.thread`` is the first failing thread (an index into the batch, or
    None when not about one thread), ``e.function`` and ``e.block`` where it
    failed, ``e.message`` the bare reason and ``e.batch`` the batch size.
    """

    def __init__(self, message):
        super().__init__(message)
        self.message = message
        self.thread = None
        self.function = ""
        self.block = ""
        self.batch = 0
