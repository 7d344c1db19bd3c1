// The routing core: rings and lookups, failover and bounded loads,
// migration, snapshots, identity, statistics, errors. The operators' helpers
// (servers files, planning, diffs) are in chash/operators.h.
#ifndef CHASH_CHASH_H_
#define CHASH_CHASH_H_

#include "chash/address.h"
#include "chash/crc32.h"
#include "chash/dispatch.h"
#include "chash/failover.h"
#include "chash/flavors.h"
#include "chash/identity.h"
#include "chash/migration.h"
#include "chash/ring.h"
#include "chash/snapshot.h"
#include "chash/snapshot_keys.h"
#include "chash/snapshot_reloader.h"
#include "chash/stats.h"
#include "chash/status.h"

#endif  // CHASH_CHASH_H_
