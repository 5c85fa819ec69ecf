"""rag.terminal.printable: control characters from data are shown, never obeyed."""

from rag.terminal import printable


def test_control_characters_are_escaped_as_python_does():
    assert printable("evil\x1b[31mred\nname.pdf") == r"evil\x1b[31mred\nname.pdf"
    assert printable("cv\u202efdp.exe") == r"cv\u202efdp.exe"  # a right-to-left override
    assert printable("a\rb\x07c\x85d\u2028") == r"a\rb\x07c\x85d\u2028"
    assert printable("Zürich 日本 👩‍👧 tab\there") == r"Zürich 日本 👩‍👧 tab\there"
    assert printable("line one\n\tline two\x1b[2J", keep_newlines=True) == "line one\n\tline two\\x1b[2J"
    assert printable(42) == "42"
