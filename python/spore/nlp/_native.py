"""spore._spore.nlp, or an UnsupportedError naming what the build lacked (NOTE [Python NLP])."""
from .. import _spore
from .._spore import UnsupportedError

native = _spore.nlp
if native.missing is not None:
    raise UnsupportedError(f"spore.nlp: {native.missing}")
