"""The process's own memory: the heap alive at startup is frozen once."""

import gc

from benchwright_shared.process import freeze_startup_heap


def test_the_startup_heap_is_frozen_once_a_process() -> None:
    freeze_startup_heap()
    frozen = gc.get_freeze_count()
    assert frozen > 0  # what was alive is out of the collections' way
    made_later = [[n] for n in range(1000)]
    freeze_startup_heap()
    assert gc.get_freeze_count() == frozen  # a second start freezes nothing more
    assert len(made_later) == 1000
