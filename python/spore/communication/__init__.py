"""mindspore.communication under Spore: init(), get_rank(), get_group_size() over spore::dist
(MPI; NOTE [Distributed training in Python] in docs/design.md). Start the ranks with
`mpirun -np N python script.py` or `spore launch -n N -- python script.py`."""
from .management import (init, release, get_rank, get_group_size, get_local_rank, get_local_rank_size,
                         GlobalComm, HCCL_WORLD_COMM_GROUP, NCCL_WORLD_COMM_GROUP, MCCL_WORLD_COMM_GROUP)

__all__ = ["init", "release", "get_rank", "get_group_size", "get_local_rank", "get_local_rank_size", "GlobalComm",
           "HCCL_WORLD_COMM_GROUP", "NCCL_WORLD_COMM_GROUP", "MCCL_WORLD_COMM_GROUP"]
