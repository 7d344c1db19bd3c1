# The other programs' config readers as one library (--nginx-conf,
# --haproxy-cfg, --nutcracker-yml and the YAML layer --envoy-cluster shares):
# the chash tool links it, and so does the readers' fuzzer, which fuzz/
# builds without the tool. Included by tools/cli/ and fuzz/; defined once.
if(NOT TARGET chash_conf_readers)
  add_library(chash_conf_readers STATIC
    ${CMAKE_CURRENT_LIST_DIR}/config_file.cc
    ${CMAKE_CURRENT_LIST_DIR}/haproxy_conf.cc
    ${CMAKE_CURRENT_LIST_DIR}/nginx_conf.cc
    ${CMAKE_CURRENT_LIST_DIR}/nutcracker_conf.cc
    ${CMAKE_CURRENT_LIST_DIR}/yaml_document.cc
  )
  target_include_directories(chash_conf_readers PUBLIC ${CMAKE_CURRENT_LIST_DIR})
  target_link_libraries(chash_conf_readers PUBLIC chash::chash_static chash_internal
                        PRIVATE chash_warnings)
  # g++ 12 warns -Wrestrict on `"literal" + std::string&&` under -O2 (GCC bug
  # 105329, a false positive in libstdc++'s inlined insert); nginx_conf.cc
  # has such concatenations.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
    set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/nginx_conf.cc
                                PROPERTIES COMPILE_OPTIONS "-Wno-restrict")
  endif()
  # YAML is read with Debian's libyaml (libyaml-dev; tools/dev/lib/common.sh
  # installs it, tools/dev/test-arm unpacks its arm64 .debs for the cross build),
  # found as libsodium and xxHash are, so the native and the aarch64 builds
  # read YAML alike.
  find_path(CHASH_YAML_INCLUDE_DIR yaml.h REQUIRED)
  find_library(CHASH_YAML_LIBRARY NAMES yaml REQUIRED)
  add_library(chash_yaml UNKNOWN IMPORTED)
  set_target_properties(chash_yaml PROPERTIES IMPORTED_LOCATION "${CHASH_YAML_LIBRARY}"
                        INTERFACE_INCLUDE_DIRECTORIES "${CHASH_YAML_INCLUDE_DIR}")
  target_link_libraries(chash_conf_readers PUBLIC chash_yaml)
endif()
