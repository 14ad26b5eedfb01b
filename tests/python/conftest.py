"""The Python modules' tests: run by ctest (python.pytest) with PYTHONPATH=<build>/python and the
interpreter the modules were built for; by hand:
  PYTHONPATH=build/release/python /usr/bin/python3 -m pytest tests/python examples/chapter5/python
"""
import pytest


@pytest.fixture(autouse=True)
def pynative():
    """Each test starts in PYNATIVE_MODE whatever the one before it left."""
    import spore
    spore.set_context(mode=spore.PYNATIVE_MODE)
    yield
    spore.set_context(mode=spore.PYNATIVE_MODE)
