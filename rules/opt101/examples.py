"""OPT101's examples: code the rule must leave as it is (`VALID`) and code it must rewrite (`INVALID`).

tests/test_rule_examples.py runs each one; the rule class assigns both.
"""

from optpatch.rule import Example

VALID = [
    # Partial write: the untouched elements must stay zero.
    "import torch\ndef f(n, v):\n    x = torch.zeros(n)\n    x[0] = v\n    return x\n",
    # numpy is not torch.
    "import numpy as np\ndef f(n):\n    x = np.zeros(n)\n    x[:] = 1\n    return x\n",
    # A shadowed name is not torch.
    "def f(torch, n, y):\n    x = torch.zeros(n)\n    x.copy_(y)\n    return x\n",
    # Read-modify-write.
    "import torch\ndef f(n, y):\n    x = torch.zeros(n)\n    x += y\n    return x\n",
    # The write is inside a loop that may run zero times.
    "import torch\ndef f(n, ys):\n    x = torch.zeros(n)\n    for y in ys:\n        x.copy_(y)\n    return x\n",
    # Written in one branch only.
    "import torch\ndef f(n, y, c):\n    x = torch.zeros(n)\n    if c:\n        x.copy_(y)\n    return x\n",
    # An exception before the write is caught, and the handler falls through to the read.
    "import torch\ndef f(n, y):\n    try:\n        x = torch.zeros(n)\n        check(y)\n        x.copy_(y)\n"
    "    except ValueError:\n        pass\n    return x\n",
    # A context manager that may swallow the exception.
    "import contextlib, torch\ndef f(n, y):\n    x = torch.zeros(n)\n    with contextlib.suppress(ValueError):\n"
    "        check(y)\n        x.copy_(y)\n    return x\n",
    # `break` skips the write; the zeros leave the loop.
    "import torch\ndef f(n, y, c):\n    for _ in range(2):\n        x = torch.zeros(n)\n        if c:\n"
    "            break\n        x.copy_(y)\n    return x\n",
    # Partial writes with a gap: x[h] is never written.
    "import torch\ndef f(a, b, h):\n    x = torch.zeros(8)\n    x[:h] = a\n    x[h + 1:] = b\n    return x\n",
    # A loop over fewer indices than the dimension has.
    "import torch\ndef f(n, m, v):\n    x = torch.zeros(n, 2)\n    for i in range(m):\n        x[i] = v\n    return x\n",
    # Expected to raise: `zeros` and `empty` may raise differently.
    "import pytest, torch\ndef test_f(t, y):\n    with pytest.raises(NotImplementedError):\n"
    "        x = t.new_zeros(3)\n        x.copy_(y)\n",
    # Nothing reads it: advice, not a fix.
    "import torch\ndef f(t):\n    _ = t.new_zeros(3)\n    return t\n",
    # A zero-initialised parameter that nothing initialises: its zeros are the point.
    "import torch.nn as nn, torch\nclass Gate(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
    "        self.gate = nn.Parameter(torch.zeros(1))\n",
]
INVALID = [
    Example(
        "import torch\ndef f(y):\n    x = torch.zeros(y.shape, dtype=y.dtype)\n    x.copy_(y)\n    return x\n",
        "import torch\ndef f(y):\n    x = torch.empty(y.shape, dtype=y.dtype)\n    x.copy_(y)\n    return x\n",
    ),
    Example(
        "import torch as t\ndef f(y):\n    x = t.zeros_like(y)\n    x[:] = y * 2\n    return x\n",
        "import torch as t\ndef f(y):\n    x = t.empty_like(y)\n    x[:] = y * 2\n    return x\n",
    ),
    Example(
        "from torch import zeros\ndef f(n, y):\n    x = zeros(n)\n    x.fill_(y)\n    return x\n",
        "from torch import empty, zeros\ndef f(n, y):\n    x = empty(n)\n    x.fill_(y)\n    return x\n",
    ),
    Example(
        "import torch\ndef f(y, c):\n    x = y.new_zeros(y.shape)\n    if c:\n        x.fill_(1)\n    else:\n        x.copy_(y)\n    return x\n",
        "import torch\ndef f(y, c):\n    x = y.new_empty(y.shape)\n    if c:\n        x.fill_(1)\n    else:\n        x.copy_(y)\n    return x\n",
    ),
    Example(
        "import torch\ndef f(a, b, h):\n    x = torch.zeros(4, 8)\n    x[:, :h], x[:, h:] = a, b\n    return x\n",
        "import torch\ndef f(a, b, h):\n    x = torch.empty(4, 8)\n    x[:, :h], x[:, h:] = a, b\n    return x\n",
    ),
    Example(
        "import torch\ndef f(rows):\n    x = torch.zeros(len(rows), 3)\n    for i in range(len(rows)):\n        x[i] = rows[i]\n    return x\n",
        "import torch\ndef f(rows):\n    x = torch.empty(len(rows), 3)\n    for i in range(len(rows)):\n        x[i] = rows[i]\n    return x\n",
    ),
    Example(
        "import torch\nfrom torch import nn\nclass P(nn.Module):\n    def __init__(self, n):\n        super().__init__()\n"
        "        self.w = nn.Parameter(torch.zeros(n, n))\n        nn.init.xavier_uniform_(self.w)\n",
        "import torch\nfrom torch import nn\nclass P(nn.Module):\n    def __init__(self, n):\n        super().__init__()\n"
        "        self.w = nn.Parameter(torch.empty(n, n))\n        nn.init.xavier_uniform_(self.w)\n",
    ),
    Example(
        "import torch\ndef f(s):\n    i = torch.full((s.shape[0],), 0)\n    torch.argmax(s, dim=1, out=i)\n    return i\n",
        "import torch\ndef f(s):\n    i = torch.empty((s.shape[0],), dtype=torch.int64)\n    torch.argmax(s, dim=1, out=i)\n    return i\n",
    ),
]
