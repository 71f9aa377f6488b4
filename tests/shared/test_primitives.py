"""Money, ids and hashing: the small helpers every service leans on."""

from benchwright_shared.hashing import canonical_json, fingerprint12, sha256_hex
from benchwright_shared.ids import benchmark_id_for, impl_id_for, new_pat, new_run_id
from benchwright_shared.money import (
    cents_to_dollars,
    dollars_to_cents,
    dollars_to_micros,
    micros_to_cents,
)


def test_money_rounds_half_up_and_never_floats_inside() -> None:
    assert dollars_to_cents("0.125") == 13
    assert dollars_to_cents(15.0) == 1500
    assert dollars_to_micros("0.0000015") == 2
    assert micros_to_cents(5_000) == 1  # half a cent rounds up
    assert micros_to_cents(4_999) == 0
    assert cents_to_dollars(4215) == 42.15


def test_catalog_ids_are_stable_and_impl_ids_are_content_hashes() -> None:
    assert benchmark_id_for("GSM8K") == benchmark_id_for("gsm8k")
    assert benchmark_id_for("GSM8K").startswith("bm_")
    code = "class Task: pass\n"
    assert impl_id_for("bm_x", code) == f"bm_x:{fingerprint12(code)}"
    assert impl_id_for("bm_x", code) != impl_id_for("bm_y", code)
    assert len(fingerprint12(code)) == 12 and sha256_hex(code).startswith(fingerprint12(code))


def test_fresh_ids_do_not_repeat() -> None:
    assert new_run_id() != new_run_id()
    assert new_pat().startswith("bw_live_pat_") and new_pat() != new_pat()
    assert canonical_json({"é": 1}) == '{"é":1}'
