"""A Harbor bridge child that never answers: it notes its pid, then waits forever."""

import os
import time
from pathlib import Path

Path(os.environ["BW_HANG_PIDFILE"]).write_text(str(os.getpid()))
while True:
    time.sleep(1)
