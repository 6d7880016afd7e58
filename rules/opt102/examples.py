"""The rule's examples: code OPT102 must leave unchanged, and code it must rewrite, with what it becomes.

tests/test_rule_examples.py runs each one; the manual's sections (rule.py) say why.
"""

from optpatch.rule import Example

VALID: list[str] = [
    # A dtype conversion, not a device.
    "import torch\ndef f(n):\n    return torch.zeros(n).to(torch.float16)\n",
    # Python's int is a dtype in `.to()`.
    "import torch\ndef f(n):\n    return torch.arange(n).to(int)\n",
    # Not a factory.
    "import torch\ndef f(a, b, d: torch.device):\n    return torch.cat([a, b]).to(d)\n",
    # Already has a device other than the CPU: never a second one.
    "import torch\ndef f(n, d: torch.device, e: torch.device):\n    return torch.zeros(n, device=e).to(d)\n",
    # Another tensor's device and dtype.
    "import torch\ndef f(n, other: torch.Tensor):\n    return torch.zeros(n).to(other)\n",
    # Deliberate pinned staging for an asynchronous copy.
    "import torch\ndef f(x, d: torch.device):\n    return x.pin_memory().to(d, non_blocking=True)\n",
    # numpy is not torch.
    "import numpy as np\ndef f(n, d: str):\n    return np.zeros(n).to(d)\n",
    # Not exact: float32(0.1) widened is not float64(0.1).
    "import torch\ndef f(d: torch.device):\n    return torch.full((4,), 0.1).to(d, torch.float64)\n",
    # A method between that computes new values.
    "import torch\ndef f(n):\n    return torch.arange(n).cumsum(0).cuda()\n",
    # A legacy type without a move: the tensor goes to the CPU, as asked.
    "import torch\ndef f(n):\n    return torch.zeros(n).type(torch.IntTensor)\n",
    # A probe: the blocking copy is the point.
    "import torch\ndef probe():\n    torch.zeros((2, 2)).cuda()\n",
    # The exception is what the test checks.
    "import pytest, torch\ndef test_index(i: int):\n    with pytest.raises(RuntimeError):\n        torch.ones(2).cuda(i)\n",
]

INVALID: list[Example] = [
    Example(
        "import torch\ndef f(n):\n    return torch.arange(n).cuda()\n",
        'import torch\ndef f(n):\n    return torch.arange(n, device="cuda")\n',
    ),
    Example(
        "import torch as t\ndef f(n, d: t.device):\n    return t.zeros(n, dtype=t.int32).to(d, non_blocking=True)\n",
        "import torch as t\ndef f(n, d: t.device):\n    return t.zeros(n, dtype=t.int32, device=d)\n",
    ),
    Example(
        "import torch\ndef f(x, n):\n    y = torch.ones(\n        n,\n    ).to(x.device)\n    return y\n",
        "import torch\ndef f(x, n):\n    y = torch.ones(\n        n,\n        device=x.device,\n    )\n    return y\n",
    ),
    Example(
        "import torch\ndef f(n):\n    dev = torch.device('cuda', 1)\n    t = torch.eye(n)\n    t = t.to(dev)\n    return t\n",
        "import torch\ndef f(n):\n    dev = torch.device('cuda', 1)\n    t = torch.eye(n, device=dev)\n    return t\n",
    ),
    Example(
        "import torch\ndef f(n, k, x):\n    return torch.arange(n).view(-1, 1).repeat(1, k).int().to(x.device)\n",
        "import torch\ndef f(n, k, x):\n    return torch.arange(n, device=x.device).view(-1, 1).repeat(1, k).int()\n",
    ),
    Example(
        "import torch\ndef f(n):\n    return torch.zeros(n, dtype=torch.int64, device='cpu').cuda()\n",
        "import torch\ndef f(n):\n    return torch.zeros(n, dtype=torch.int64, device='cuda')\n",
    ),
    Example(
        "import torch\ndef f(c, d: torch.device):\n    return torch.zeros_like(c).float().to(d)\n",
        "import torch\ndef f(c, d: torch.device):\n    return torch.zeros_like(c, device=d).float()\n",
    ),
    Example(
        "import torch\ndef f(b, n, d: torch.device):\n    return torch.zeros(b, n).type(torch.IntTensor).to(d)\n",
        "import torch\ndef f(b, n, d: torch.device):\n    return torch.zeros(b, n, dtype=torch.int32, device=d)\n",
    ),
    Example(
        "import torch\ndef f(t: torch.Tensor, n):\n    idx = torch.arange(n)\n    return t[idx]\n",
        "import torch\ndef f(t: torch.Tensor, n):\n    idx = torch.arange(n, device=t.device)\n    return t[idx]\n",
    ),
    Example(
        "import torch\ndef f(n, device):\n    return torch.zeros(n).to(device)\n",
        "import torch\ndef f(n, device):\n    return torch.zeros(n, device=device)\n",
        tier="validate",
    ),
    Example(
        "import torch\ndef f(n):\n    return torch.randn(n, 4).cuda(0)\n",
        'import torch\ndef f(n):\n    return torch.randn(n, 4, device="cuda:0")\n',
        tier="unsafe",
    ),
]
