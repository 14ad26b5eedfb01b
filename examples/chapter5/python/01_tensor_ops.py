# Chapter 5.4, "张量、数据类型与设备上下文", as printed; only the imports changed (mindspore ->
# spore) and device_target "Ascend" -> "CPU" (Spore has no Ascend backend; the chapter's
# samples/chapter5/01_tensor_ops.py confirms the same product on the CPU).
import spore as ms
from spore import Tensor, ops

ms.set_context(mode=ms.PYNATIVE_MODE, device_target="CPU", device_id=0)

a = Tensor([[1.0, 2.0], [3.0, 4.0]], ms.float16)
print(ops.matmul(a, a).asnumpy())
