// Every layer of spore::nn (one include for networks).
#pragma once
#include "spore/nn/activation.h"
#include "spore/nn/cell.h"
#include "spore/nn/conv.h"
#include "spore/nn/dense.h"
#include "spore/nn/init.h"
#include "spore/nn/losses.h"
#include "spore/nn/normalization.h"
