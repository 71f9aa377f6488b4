"""A JSON-lines blob read a page at a time, without splitting all of it."""

from array import array


class JsonLines:
    """``data``'s lines, by index, found through an index of where each one starts.

    A 14,000-row subset as a list of strings costs about ten times its bytes in
    memory; the offsets cost eight bytes a line. Lines end at ``\n`` only: a JSON
    string may hold U+2028 or U+0085 raw, which ``str.splitlines`` would split on.
    """

    def __init__(self, data: bytes) -> None:
        self.data = data
        starts = array("q")
        position = 0
        while position < len(data):
            end = data.find(b"\n", position)
            end = len(data) if end < 0 else end
            if data[position:end].strip():
                starts.append(position)
            position = end + 1
        self._starts = starts

    def __len__(self) -> int:
        return len(self._starts)

    def line(self, index: int) -> str:
        start = self._starts[index]
        end = self.data.find(b"\n", start)
        return self.data[start : end if end >= 0 else len(self.data)].decode()

    def page(self, offset: int, limit: int) -> list[str]:
        """Lines ``offset`` up to ``offset + limit`` (fewer at the end)."""
        return [self.line(i) for i in range(max(offset, 0), min(offset + limit, len(self)))]
