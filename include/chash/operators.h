// The operators' helpers, beside the routing core (chash/chash.h): what the
// `chash` tool is made of, for embedders who want the same.
//
//   servers_file.h  the servers file: one "ADDR [WEIGHT]" a line
//   plan.h          PlanPointMultiples: choose a point multiple for a fleet
//   diff.h          DiffRings: the exact share of keys two rings move
//   stats.h         ComputeRingStats and RingStatsJson
//
// chash/chash.h does not include these (stats.h aside, which the core's
// C API mirrors): a proxy that only routes needs none of them.
#ifndef CHASH_OPERATORS_H_
#define CHASH_OPERATORS_H_

#include "chash/diff.h"
#include "chash/plan.h"
#include "chash/servers_file.h"
#include "chash/stats.h"

#endif  // CHASH_OPERATORS_H_
