"""The process group in MindSpore's words (mindspore.communication.management). Spore has one
group, the world, on MPI whatever backend_name says: "hccl", "nccl" and "mccl" are accepted so
that scripts written for Ascend or GPU clusters run unchanged, and their collectives run on MPI."""
import atexit
import os

from .. import _spore

HCCL_WORLD_COMM_GROUP = "hccl_world_group"
NCCL_WORLD_COMM_GROUP = "nccl_world_group"
MCCL_WORLD_COMM_GROUP = "mccl_world_group"
_WORLD_NAMES = (None, HCCL_WORLD_COMM_GROUP, NCCL_WORLD_COMM_GROUP, MCCL_WORLD_COMM_GROUP, "world")
_BACKENDS = (None, "mpi", "hccl", "nccl", "mccl")


class GlobalComm:
    BACKEND = "mpi"
    WORLD_COMM_GROUP = HCCL_WORLD_COMM_GROUP
    INITED = False


def _native():
    if not _spore.dist.available:
        raise _spore.UnsupportedError(_spore.dist.reason)
    return _spore.dist


def _check_group(group, who):
    if group not in _WORLD_NAMES:
        raise ValueError(f"{who}: Spore has one communication group, the world; got group={group!r} "
                         f"(pass None or GlobalComm.WORLD_COMM_GROUP)")


def init(backend_name=None):
    """Joins the job the launcher started (mpirun, spore launch, or a PMIx/PMI launcher). Without
    one it raises SporeValueError (a ValueError) with the `spore launch` line that starts this
    script on 2 processes. A second call does nothing."""
    if backend_name not in _BACKENDS:
        raise ValueError(f"init: backend_name must be one of {_BACKENDS[1:]} or None, got {backend_name!r} "
                         f"(every backend name runs on MPI here)")
    dist = _native()
    if dist.is_initialized():
        return
    try:
        dist.init()
    except _spore.SporeValueError as e:
        # dist::init's advice ends with the C++ option for a group of one, which Python does not
        # offer (MindSpore's init() refuses a missing launcher too): keep the launch line only.
        message = str(e).split(" (or set InitOptions::allow_single_process")[0]
        raise _spore.SporeValueError(message + " (MindSpore's init() needs a launcher as well: msrun or mpirun)") \
            from None
    GlobalComm.INITED = True
    # MPI_Finalize at exit: mpirun counts a rank that exits without it as failed.
    atexit.register(release)


def release():
    """Shuts the group down (MPI_Finalize); collectives refuse afterwards. Idempotent."""
    if _spore.dist.available and _spore.dist.is_initialized():
        _spore.dist.finalize()


def get_rank(group=None):
    """This process's rank in the world (0 before init, as a single process)."""
    _check_group(group, "get_rank")
    return _spore.dist.get_rank() if _spore.dist.available else 0


def get_group_size(group=None):
    """The number of ranks in the world (1 before init)."""
    _check_group(group, "get_group_size")
    return _spore.dist.get_group_size() if _spore.dist.available else 1


def get_local_rank(group=None):
    """The rank among this machine's processes (Open MPI's OMPI_COMM_WORLD_LOCAL_RANK)."""
    _check_group(group, "get_local_rank")
    return int(os.environ.get("OMPI_COMM_WORLD_LOCAL_RANK", get_rank()))


def get_local_rank_size(group=None):
    _check_group(group, "get_local_rank_size")
    return int(os.environ.get("OMPI_COMM_WORLD_LOCAL_SIZE", get_group_size()))
