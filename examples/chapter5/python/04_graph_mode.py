# Chapter 5.7, "把函数编译成图", as printed; only the import changed. Run as
#   python 04_graph_mode.py --mode pynative | --mode graph
# as the chapter's samples/chapter5/04_graph_mode.py; both give 13.0.
import sys

import spore as ms


@ms.jit
def scaled_add(a, b, scale: float = 2.0):
    return (a + b) * scale


def plain_scaled_add(a, b, scale: float = 2.0):
    return (a + b) * scale


mode = "graph" if "--mode" in sys.argv and sys.argv[sys.argv.index("--mode") + 1] == "graph" else "pynative"
ms.set_context(mode=ms.GRAPH_MODE if mode == "graph" else ms.PYNATIVE_MODE)
a = ms.Tensor([1.5], ms.float32)
b = ms.Tensor([5.0], ms.float32)
results = {"jit_first": scaled_add(a, b).asnumpy()[0], "jit_second": scaled_add(a, b).asnumpy()[0],
           "plain": plain_scaled_add(a, b).asnumpy()[0]}
ms.set_context(mode=ms.PYNATIVE_MODE)
print(mode, results)
