// Everything a pipeline author needs: Pipeline, stage(), sink(), Chain, Emit, the options,
// Shared<T>, AckLedger, Observer and Stats.
#pragma once

#include "conveyor/framework/ack.hpp"
#include "conveyor/framework/chain.hpp"
#include "conveyor/framework/emit.hpp"
#include "conveyor/framework/merge.hpp"
#include "conveyor/framework/observer.hpp"
#include "conveyor/framework/options.hpp"
#include "conveyor/framework/pipeline.hpp"
#include "conveyor/framework/route.hpp"
#include "conveyor/framework/shared.hpp"
#include "conveyor/framework/stage.hpp"
#include "conveyor/framework/stats.hpp"
#include "conveyor/framework/tee.hpp"
