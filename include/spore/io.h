// Files: the format library (spore/format.h: SHA-256, atomic writes, safetensors, mapped files)
// and Cell checkpoints (spore/checkpoint.h). Code below the framework includes format.h alone.
#pragma once
#include "spore/checkpoint.h"
#include "spore/format.h"
