// Umbrella header: everything an embedder needs.
#ifndef CHASH_CHASH_H_
#define CHASH_CHASH_H_

#include "chash/address.h"
#include "chash/crc32.h"
#include "chash/diff.h"
#include "chash/dispatch.h"
#include "chash/failover.h"
#include "chash/identity.h"
#include "chash/migration.h"
#include "chash/plan.h"
#include "chash/ring.h"
#include "chash/servers_file.h"
#include "chash/snapshot.h"
#include "chash/stats.h"
#include "chash/status.h"

#endif  // CHASH_CHASH_H_
