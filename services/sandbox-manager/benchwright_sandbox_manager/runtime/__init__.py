"""Files copied into every work sandbox: the scorer base class and its runner, and
the Inspect harness's runner.

They run under the sandbox's interpreter with nothing but the standard
library (``bench_inspect`` adds the harness's mounted libraries), so a scorer
needs no Benchwright install to run.
"""

from importlib.resources import files


def runtime_files() -> dict[str, str]:
    """Name -> source text of every file a sandbox needs beside ``task_impl.py``."""
    here = files(__name__)
    names = ("bench_task.py", "bench_runner.py", "bench_inspect.py", "bench_inspect_evals.py")
    return {name: here.joinpath(name).read_text() for name in names}
