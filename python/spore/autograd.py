"""value_and_grad and grad in MindSpore's spelling over Spore's tape (C++: autograd_bindings.cc).
The Python function is called with the tensors the tape watches; the ops it calls are recorded
by the same tape as C++ code's."""
from . import _spore, parallel_context
from ._spore import Parameter, Tensor


def _weights(weights):
    if weights is None:
        return []
    if isinstance(weights, Parameter):
        return [weights]
    ws = list(weights)
    for i, w in enumerate(ws):
        if not isinstance(w, Parameter):
            raise TypeError(f"value_and_grad: weights[{i}] is a {type(w).__name__}, not a Parameter; "
                            f"pass net.trainable_params()")
    return ws


def _positions(grad_position):
    if grad_position is None:
        return None
    if isinstance(grad_position, bool) or not isinstance(grad_position, (int, tuple, list)):
        raise TypeError(f"value_and_grad: grad_position must be an int, a tuple of ints or None, "
                        f"got {grad_position!r}")
    return [grad_position] if isinstance(grad_position, int) else list(grad_position)


def value_and_grad(fn, grad_position=0, weights=None, has_aux=False, return_ids=False):
    """Returns a function that computes (value, grads) of fn(*args) (MindSpore's value_and_grad).

    grads: the gradients of the inputs at grad_position (one tensor for an int, a tuple for a
    tuple), of the weights (a tuple) when grad_position is None, or (inputs', weights') with both.
    has_aux: fn returns (loss, aux...), only loss is differentiated, value is (loss, aux...)."""
    positions = _positions(grad_position)
    ws = _weights(weights)
    if positions is None and weights is None:
        raise ValueError("value_and_grad: grad_position and weights cannot both be None")
    if return_ids:
        raise NotImplementedError("value_and_grad: return_ids is not supported")

    def wrapper(*args):
        tensor_at = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        mapped = []
        for p in positions or []:
            q = p + len(args) if p < 0 else p
            if q < 0 or q >= len(args):
                raise IndexError(f"value_and_grad: grad_position {p} is outside the {len(args)} arguments")
            if q not in tensor_at:
                raise TypeError(f"value_and_grad: argument {p} is a {type(args[q]).__name__}; only Tensors "
                                f"can be differentiated (set grad_position to the tensors' positions, or None)")
            mapped.append(tensor_at.index(q))
        aux = []

        def inner(tensors):
            full = list(args)
            for j, i in enumerate(tensor_at):
                full[i] = tensors[j]
            out = fn(*full)
            if has_aux:
                if not isinstance(out, tuple) or len(out) < 2:
                    raise TypeError("value_and_grad: with has_aux=True the function must return (loss, aux...)")
                aux[:] = out[1:]
                return out[0]
            return out

        tensors = [args[i] for i in tensor_at]
        # A DistributedGradReducer over exactly these weights: its all-reduces start during
        # backward and it is handed the gradients in flight (nn/grad_reducer.py).
        reducer = parallel_context._reducer_for(ws) if positions is None and ws else None
        if reducer is not None:
            value, grads = reducer._value_and_grad(inner, ws, tensors)
            if has_aux:
                value = (value, *aux)
            return value, grads
        value, in_grads, w_grads = _spore._value_and_grad(inner, mapped, ws)(tensors)
        if positions is None:
            grads = tuple(w_grads)
        else:
            g_in = in_grads[0] if isinstance(grad_position, int) else tuple(in_grads)
            grads = g_in if weights is None else (g_in, tuple(w_grads))
        if has_aux:
            value = (value, *aux)
        return value, grads

    return wrapper


def grad(fn, grad_position=0, weights=None, has_aux=False, return_ids=False):
    """The gradients alone (MindSpore's grad); with has_aux, (grads, aux)."""
    vg = value_and_grad(fn, grad_position, weights, has_aux, return_ids)

    def wrapper(*args):
        value, grads = vg(*args)
        if has_aux:
            return grads, tuple(value[1:])
        return grads

    return wrapper


class no_grad(_spore._NoGrad):
    """with spore.no_grad(): ops inside are not recorded by the tapes already open."""
