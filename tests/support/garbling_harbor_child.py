"""A Harbor bridge child that writes something other than the protocol on its stdout."""

import sys

sys.stdout.write("Traceback? no: just a stray print\n")
sys.stdout.flush()
