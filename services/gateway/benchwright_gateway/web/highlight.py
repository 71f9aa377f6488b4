"""Python source as escaped HTML, highlighted by Pygments.

Scorer code is untrusted text like any other: Pygments escapes every token and
wraps it in a classed ``<span>`` (``k`` keywords, ``nf``/``nc`` names defined,
``s*`` strings, ``c*`` comments, ``m*`` numbers, ``nb`` builtins; the stylesheet
colours them), and nothing else is markup. Lexing never fails: what is not Python
comes out as plain, escaped text.
"""

from markupsafe import Markup
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer

# One of each, shared: neither keeps state between calls.
_LEXER = PythonLexer(stripnl=False, ensurenl=False)
_FORMATTER = HtmlFormatter(nowrap=True)


def highlight_python(code: str) -> Markup:
    """``code`` as HTML: the text unchanged, escaped, wrapped in classed spans."""
    return Markup(highlight(code, _LEXER, _FORMATTER))
