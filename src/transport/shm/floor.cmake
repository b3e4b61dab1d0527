# Node peers: shared segments, Cross Memory Attach, message rings.
tsu_transport(NAME shm SOURCES
  transport/shm/peer_liveness.cpp
  transport/shm/shm_plugin.cpp
  transport/shm/shm_settings.cpp
  transport/shm/shm_transport.cpp)
