# Chapter 5.10, "Lite 的推理流程", as printed (only the import changed), on the file 06 exported.
# The chapter's order: first the CPU backend, to tell an artifact problem from a backend problem;
# context.target is ["cpu"] for that run (the printed ["ascend"] is tried afterwards and refused
# with the reason, as this build has no Ascend backend).
import numpy as np
import spore_lite as mslite

input_tensor = mslite.Tensor(np.linspace(-1, 1, 4).reshape(1, 4).astype(np.float16))

context = mslite.Context()
context.target = ["cpu"]
context.ascend.device_id = 0

model = mslite.Model()
model.build_from_file("outputs/chapter5_linear.mindir", mslite.ModelType.MINDIR, context)
outputs = model.predict([input_tensor])
print("cpu:", outputs[0].get_data_to_numpy())

ascend = mslite.Context()
ascend.target = ["ascend"]
try:
    mslite.Model().build_from_file("outputs/chapter5_linear.mindir", mslite.ModelType.MINDIR, ascend)
    ascend_result = "built"
except mslite.SporeError as e:
    ascend_result = f"refused: {e}"
print("ascend:", ascend_result)
