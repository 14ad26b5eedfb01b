// The evidence harness (issue 4) and the environment report (`spore env`).
#pragma once
#include "spore/probe/env.h"
#include "spore/probe/op_matrix.h"
#include "spore/probe/probe.h"
#include "spore/probe/report.h"
#include "spore/probe/runner.h"
