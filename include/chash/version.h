/* chash's version, for C and C++. CMakeLists.txt's project(VERSION) must
 * match these macros (configuring checks it); chash_version() returns the
 * version of the library actually loaded, CHASH_VERSION_STRING the one a
 * consumer was compiled against. */
#ifndef CHASH_VERSION_H_
#define CHASH_VERSION_H_

#define CHASH_VERSION_MAJOR 1
#define CHASH_VERSION_MINOR 0
#define CHASH_VERSION_PATCH 0
#define CHASH_VERSION_STRING "1.0.0"
/* MAJOR * 10000 + MINOR * 100 + PATCH: compare with chash_version_number(). */
#define CHASH_VERSION_NUMBER \
  (CHASH_VERSION_MAJOR * 10000 + CHASH_VERSION_MINOR * 100 + CHASH_VERSION_PATCH)

#endif /* CHASH_VERSION_H_ */
