# The rank itself: the smallest transport, the one to copy for a new one.
tsu_transport(NAME self SOURCES
  transport/self/self_plugin.cpp)
