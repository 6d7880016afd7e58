"""exception_contexts: the blocks where an exception raised by an expression is part of what the code does."""

from pathlib import Path

import libcst as cst
import pytest

from optpatch.analysis.exception_contexts import expected_exception
from optpatch.python_frontend import PythonModule
from optpatch.source import SourceFile

HEAD = "import contextlib\nimport pytest\nimport unittest\nfrom contextlib import suppress\nimport torch\n\n\nclass Mine(Exception):\n    pass\n\n\n"


def _found(body: str):
    code = HEAD + body
    module = PythonModule(SourceFile("m.py", Path("m.py"), code.encode(), code, "utf-8", False, "python"))
    site = next(c for c in module.calls() if isinstance(c.func, cst.Name) and c.func.value == "site")
    return expected_exception(module, site)


@pytest.mark.parametrize(
    "body, construct",
    [
        ("def f():\n    with pytest.raises(RuntimeError):\n        site()\n", "`with pytest.raises(...)`"),
        ("def f():\n    with pytest.warns(UserWarning, match='x'):\n        y = site()\n", "`with pytest.warns(...)`"),
        ("class T(unittest.TestCase):\n    def test(self):\n        with self.assertRaisesRegex(ValueError, 'x'):\n"
         "            site()\n", "`with self.assertRaisesRegex(...)`"),
        ("def f(t):\n    with t.assertWarns(UserWarning):\n        site()\n", "`with t.assertWarns(...)`"),
        ("def f(t):\n    t.assertRaises(RuntimeError, lambda: site())\n", "`t.assertRaises(...)`"),
        ("def f():\n    with contextlib.suppress(Exception):\n        site()\n", "`with contextlib.suppress(...)`"),
        ("def f():\n    with suppress(RuntimeError):\n        site()\n", "`with suppress(...)`"),
        ("def f():\n    with torch.no_grad(), pytest.raises(RuntimeError):\n        site()\n", "`with pytest.raises(...)`"),
        ("def f():\n    try:\n        site()\n    except RuntimeError:\n        pass\n", "`except RuntimeError`"),
        ("def f():\n    try:\n        site()\n    except:\n        pass\n", "`except`"),
        ("def f():\n    try:\n        site()\n    except (KeyError, AssertionError):\n        pass\n", "AssertionError"),
        ("def f():\n    try:\n        site()\n    except torch.cuda.OutOfMemoryError:\n        pass\n", "OutOfMemoryError"),
        ("from errors import Failure\ndef f():\n    try:\n        site()\n    except Failure:\n        pass\n", "`except Failure`"),
        ("def f():\n    try:\n        for i in range(2):\n            with torch.no_grad():\n                site()\n"
         "    except Exception:\n        pass\n", "`except Exception`"),
        ("try:\n    site()\nexcept ValueError:\n    pass\n", "`except ValueError`"),
    ],
)
def test_blocks_that_expect_or_swallow_an_exception(body, construct):
    found = _found(body)
    assert found is not None and construct in found.construct


@pytest.mark.parametrize(
    "body",
    [
        "def f():\n    site()\n",
        "def f():\n    with torch.no_grad():\n        site()\n",
        "def f():\n    try:\n        site()\n    except (KeyError, ImportError):\n        pass\n",
        "def f():\n    try:\n        site()\n    except Mine:\n        pass\n",  # torch never raises this module's class
        "def f():\n    try:\n        pass\n    except RuntimeError:\n        site()\n",  # the handler is not protected
        "def f():\n    try:\n        pass\n    finally:\n        site()\n",
        "def f():\n    with pytest.raises(RuntimeError) as info:\n        pass\n    site(info)\n",
        "def f():\n    with pytest.raises(RuntimeError):\n        def g():\n            site()\n        g()\n",  # runs elsewhere
        "def f():\n    with pytest.raises(site()):\n        pass\n",  # the argument of the check is not inside it
        "def f(t):\n    t.assertRaises(RuntimeError, site(), 2)\n",  # evaluated before the check runs
    ],
)
def test_ordinary_code(body):
    assert _found(body) is None
