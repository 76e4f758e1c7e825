"""llmlaunch's bootstrap: the one place where llmlaunch runs code inside torchrun's
process and each worker before the user's script (docs/launch.md, "The bootstrap").

    PYTHON [-u] llmlaunch_boot.py -m MODULE [ARGS...]
    PYTHON [-u] llmlaunch_boot.py SCRIPT [ARGS...]

switches on the features that $LLMLAUNCH_BOOTSTRAP lists (comma-separated), then runs
the target as `PYTHON -m MODULE ARGS` or `PYTHON SCRIPT ARGS` would: sys.argv, sys.path[0],
__main__, __file__ and the exit status are those of a plain start. site and
sitecustomize have already run (the interpreter runs them before this file); nothing
here touches PYTHONPATH or imports torch: a feature that changes torch does so when the
script imports it, so a script that sets its environment before `import torch` keeps
that order.

Features:
  libuv-off  torch.distributed.TCPStore defaults to use_libuv=False. torch >= 2.4 asks
             for libuv unless told otherwise, and a torch built without it (Debian 13's
             2.6) fails in torchrun's rendezvous and the workers' agent-store client
             ("use_libuv was requested but PyTorch was build without libuv support");
             USE_LIBUV=0 does not reach every constructor. A caller's explicit
             use_libuv is kept.
  stacks     every thread's Python stack into $LLMLAUNCH_STACKS_DIR/rank-RANK.txt on the
             signal $LLMLAUNCH_STACKS_SIGNAL (faulthandler; the script goes on): how
             llmlaunch names where each rank waits when a job hangs (--hang-timeout).
             It also names $LLMLAUNCH_STACKS_TRACER (llmlaunch) the rank's ptracer, so
             gdb or py-spy started by llmlaunch may attach under Yama's ptrace_scope 1.

Whatever the features, when the llmlaunch worker that started this interpreter names
a file in $LLMLAUNCH_END_FILE, the script's exit status is written there once the
script has ended and the interpreter's atexit handlers have run, just before the
interpreter shuts down. A rank that dies of a signal after that point did its work: a
torch thread that takes the GIL while Python 3.13 or older shuts down is ended with
pthread_exit, which aborts through a C++ destructor ("terminate called without an
active exception", pytorch/pytorch#38228; seen with gloo's worker threads). The worker
then keeps the script's status and says what happened, so torchrun does not stop the
other ranks for it.

A new feature is a function in FEATURES; an unknown name stops the start with one line
(an older bootstrap than the llmlaunch that named it is an installation problem).
"""
import atexit
import importlib.abc
import importlib.machinery
import os
import sys

ENV = "LLMLAUNCH_BOOTSTRAP"
END_FILE_ENV = "LLMLAUNCH_END_FILE"


def _fail(message):
    sys.stderr.write("llmlaunch bootstrap: %s\n" % message)
    sys.exit(1)


# ---- libuv-off ----------------------------------------------------------------

def _patch_tcpstore(dist):
    """Make use_libuv=False the default of dist.TCPStore and of every module of
    torch.distributed that already holds the class under that name (rendezvous.py
    binds it at import: `from torch.distributed import ... TCPStore`)."""
    base = getattr(dist, "TCPStore", None)
    if base is None or getattr(base, "_llmlaunch_libuv_off", False):
        return
    # torch < 2.3 has no use_libuv parameter: there is nothing to turn off.
    if "use_libuv" not in (getattr(base.__init__, "__doc__", None) or ""):
        return

    class TCPStore(base):
        _llmlaunch_libuv_off = True

        def __init__(self, *args, **kwargs):
            kwargs.setdefault("use_libuv", False)
            super().__init__(*args, **kwargs)

    TCPStore.__name__ = base.__name__
    TCPStore.__qualname__ = base.__qualname__
    TCPStore.__doc__ = base.__doc__
    for name, module in list(sys.modules.items()):
        if (name == "torch.distributed" or name.startswith("torch.distributed.")) and \
                getattr(module, "TCPStore", None) is base:
            module.TCPStore = TCPStore


class _AfterImport(importlib.abc.MetaPathFinder):
    """Run hook(module) once `name` has been imported, whoever imports it first."""

    def __init__(self, name, hook):
        self.name, self.hook = name, hook

    def find_spec(self, fullname, path, target=None):
        if fullname != self.name:
            return None
        sys.meta_path.remove(self)
        # The finders after this one find the module as they would have.
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            spec = find(fullname, path, target) if find else None
            if spec is not None:
                break
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        loader, hook = spec.loader, self.hook
        exec_module = loader.exec_module

        def exec_then_hook(module):
            exec_module(module)
            hook(module)

        loader.exec_module = exec_then_hook
        return spec


def _libuv_off():
    if "torch.distributed" in sys.modules:
        _patch_tcpstore(sys.modules["torch.distributed"])
    else:
        sys.meta_path.insert(0, _AfterImport("torch.distributed", _patch_tcpstore))


# ---- stacks --------------------------------------------------------------------

# Kept open for the process's life: faulthandler writes to its descriptor from a
# signal handler.
_stacks_file = None


def _stacks():
    """Dump every thread's Python stack into $LLMLAUNCH_STACKS_DIR/rank-RANK.txt when
    the signal $LLMLAUNCH_STACKS_SIGNAL arrives (faulthandler.register, standard
    library; the script goes on running). llmlaunch sends it when no rank has printed
    anything for --hang-timeout seconds. The file appears once the handler is
    registered, so its presence tells llmlaunch the signal is safe to send (a real-time
    signal's default action ends the process). torchrun's own process has no RANK and
    is left alone."""
    global _stacks_file
    directory = os.environ.get("LLMLAUNCH_STACKS_DIR")
    signum = os.environ.get("LLMLAUNCH_STACKS_SIGNAL")
    rank = os.environ.get("RANK")
    if not directory or not signum or rank is None or not rank.isdigit():
        return
    import faulthandler
    path = os.path.join(directory, "rank-%s.txt" % rank)
    try:
        # Appending: llmlaunch empties the file before it asks again.
        _stacks_file = open(path + ".tmp", "a")
        faulthandler.register(int(signum), file=_stacks_file, all_threads=True, chain=False)
        os.rename(path + ".tmp", path)
    except (OSError, ValueError, RuntimeError) as e:
        sys.stderr.write("llmlaunch bootstrap: no stacks for rank %s: %s\n" % (rank, e))
    _allow_tracer(os.environ.get("LLMLAUNCH_STACKS_TRACER"))


# prctl(2)'s PR_SET_PTRACER ("Ya" "ma"): under Yama's ptrace_scope 1 (Ubuntu's
# default) only a process's ancestors may attach to it; gdb and py-spy, started by
# llmlaunch for native frames, are its children, not the rank's ancestors.
_PR_SET_PTRACER = 0x59616D61


def _allow_tracer(pid):
    """Let llmlaunch's process `pid` and its children attach to this rank. Without
    Yama the call fails with EINVAL and nothing changes."""
    if not pid or not pid.isdigit():
        return
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PTRACER, int(pid), 0, 0, 0)
    except (OSError, AttributeError):
        pass


FEATURES = {
    "libuv-off": _libuv_off,
    "stacks": _stacks,
}


# ---- the script's end, for the worker ------------------------------------------

# The status the interpreter is about to exit with; None until the script has ended
# (or when it ends by KeyboardInterrupt: Python then exits by SIGINT itself).
_end_status = None


def _exit_status(code):
    """The status `raise SystemExit(code)` gives the process, as Python maps it."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    return 1


def _record_end_at_exit():
    """Registered before the script runs, so it runs after the script's own atexit
    handlers (they run last-registered first). Only in this process: a child made by
    os.fork that exits through sys.exit is not the rank."""
    path = os.environ.pop(END_FILE_ENV, None)
    if not path:
        return
    pid = os.getpid()

    def record():
        if os.getpid() != pid or _end_status is None:
            return
        try:
            with open(path + ".tmp", "w") as f:
                f.write("exit %d\n" % _end_status)
            os.rename(path + ".tmp", path)
        except OSError:
            pass

    atexit.register(record)


def _run_target(run, *args):
    global _end_status
    try:
        run(*args)
    except SystemExit as e:
        _end_status = _exit_status(e.code)
        raise
    except KeyboardInterrupt:
        raise
    except BaseException:
        _end_status = 1
        raise
    _end_status = 0


# ---- the target, as a plain start runs it -------------------------------------

def _run_script(path, args):
    import types
    # What `python SCRIPT` does: argv[0] is the script as given, sys.path[0] its
    # directory (symlinks resolved), __file__ absolute (Python >= 3.9), and the code
    # runs as the real __main__.
    sys.argv = [path] + args
    sys.path[0] = os.path.dirname(os.path.realpath(path))
    if os.path.isdir(path) or not path.endswith(".py") and _is_zip(path):
        import runpy
        sys.path[0] = path
        runpy.run_path(path, run_name="__main__")
        return
    filename = os.path.abspath(path) if sys.version_info >= (3, 9) else path
    try:
        with open(path, "rb") as f:
            source = f.read()
    except OSError as e:
        sys.stderr.write("%s: can't open file %r: [Errno %d] %s\n" % (sys.executable, filename, e.errno, e.strerror))
        sys.exit(2)
    main = types.ModuleType("__main__")
    main.__file__ = filename
    main.__builtins__ = sys.modules["builtins"]
    main.__loader__ = importlib.machinery.SourceFileLoader("__main__", filename)
    main.__spec__ = None
    sys.modules["__main__"] = main
    code = compile(source, filename, "exec", dont_inherit=True)
    del source
    try:
        exec(code, main.__dict__)
    except (SystemExit, KeyboardInterrupt):
        raise
    except BaseException as e:
        # The traceback a plain start prints: from the script's own frame on.
        tb = e.__traceback__.tb_next
        sys.excepthook(type(e), e.with_traceback(tb), tb)
        sys.exit(1)


def _is_zip(path):
    import zipfile
    try:
        return zipfile.is_zipfile(path)
    except OSError:
        return False


def _run_module(name, args):
    import runpy
    # What `python -m MODULE` does: sys.path[0] is the working directory, and
    # runpy sets argv[0] to the module's file.
    sys.argv = ["-m"] + args
    sys.path[0] = os.getcwd()
    runpy._run_module_as_main(name, alter_argv=True)


def main():
    argv = sys.argv[1:]
    _record_end_at_exit()
    for name in filter(None, (n.strip() for n in os.environ.get(ENV, "").split(","))):
        feature = FEATURES.get(name)
        if feature is None:
            _fail("unknown feature '%s' in %s (known: %s): this bootstrap is older than the llmlaunch that "
                  "started it; reinstall llmlaunch" % (name, ENV, ", ".join(sorted(FEATURES))))
        feature()
    if len(argv) >= 2 and argv[0] == "-m":
        _run_target(_run_module, argv[1], argv[2:])
    elif argv and argv[0] != "-m":
        _run_target(_run_script, argv[0], argv[1:])
    else:
        _fail("usage: llmlaunch_boot.py (-m MODULE | SCRIPT) [ARGS...]")


if __name__ == "__main__":
    main()
