"""A Harbor bridge child that dies at once, having said nothing on the protocol."""

import os
import sys

sys.stderr.write("the agent segfaulted on purpose\n")
sys.stderr.flush()
os._exit(139)
