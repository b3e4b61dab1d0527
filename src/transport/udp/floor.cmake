# Other nodes: the reliable UDP protocol (a network plug-in, TSU_NET=udp).
tsu_transport(NAME udp LIBS PkgConfig::SODIUM SOURCES
  transport/udp/udp_plugin.cpp
  transport/udp/datagram.cpp
  transport/udp/impair.cpp
  transport/udp/liveness.cpp
  transport/udp/reliability.cpp
  transport/udp/udp_socket.cpp
  transport/udp/udp_transport.cpp
  transport/udp/wake_source.cpp)
