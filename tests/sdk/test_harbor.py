"""``benchwright.harbor``: a local folder as the files of a harbor launch."""

from pathlib import Path

import pytest

from benchwright.harbor import DatasetFolderError, dataset_files, harbor_metadata


def test_a_folder_s_files_by_relative_path_without_caches_or_hidden_files(
    tmp_path: Path,
) -> None:
    (tmp_path / "t" / "tests").mkdir(parents=True)
    (tmp_path / "t" / "task.toml").write_text("")
    (tmp_path / "t" / "tests" / "test.sh").write_bytes(b"echo 1\r\n")
    for skipped in (".git/HEAD", "t/__pycache__/x.pyc", "t/.env", "node_modules/a.js"):
        (tmp_path / skipped).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / skipped).write_bytes(b"\x00secret")
    # Kept byte for byte: line endings are the task's own.
    assert dataset_files(tmp_path) == {"t/task.toml": "", "t/tests/test.sh": "echo 1\r\n"}
    metadata = harbor_metadata(tmp_path, agent="oracle", task="t")
    assert metadata["harbor_task"] == "t"
    assert metadata["harbor_harness"]["dataset"] == tmp_path.name
    assert metadata["harbor_harness"]["agent"] == "oracle"


def test_a_600_mb_file_is_refused_without_being_read(tmp_path: Path) -> None:
    with (tmp_path / "huge.bin").open("wb") as sparse:
        sparse.truncate(600 * 1024 * 1024)
    with pytest.raises(DatasetFolderError, match=r"huge\.bin holds 629,145,600 bytes"):
        dataset_files(tmp_path)


def test_many_files_past_the_launch_s_cap_are_refused(tmp_path: Path) -> None:
    for index in range(3):
        (tmp_path / f"{index}.txt").write_text("x" * 200 * 1024)
    with pytest.raises(DatasetFolderError, match="more than 524,288 bytes"):
        dataset_files(tmp_path)


@pytest.mark.parametrize("content", [b"\xff\xfe", b"a\x00b"])
def test_a_binary_file_is_refused_by_name(tmp_path: Path, content: bytes) -> None:
    (tmp_path / "blob.dat").write_bytes(content)
    with pytest.raises(DatasetFolderError, match=r"blob\.dat is not UTF-8 text"):
        dataset_files(tmp_path)


def test_a_link_out_of_the_folder_and_a_missing_folder_are_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("not the dataset's")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "leak.txt").symlink_to(outside)
    with pytest.raises(DatasetFolderError, match="links out of the dataset folder"):
        dataset_files(tmp_path / "data")
    with pytest.raises(DatasetFolderError, match="no such folder"):
        dataset_files(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(DatasetFolderError, match="holds no files"):
        dataset_files(tmp_path / "empty")
