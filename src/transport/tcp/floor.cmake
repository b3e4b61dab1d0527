# Other nodes over TCP streams (a network plug-in, TSU_NET=tcp): the
# reference network transport, the one to read before writing a new one.
tsu_transport(NAME tcp SOURCES
  transport/tcp/tcp_plugin.cpp
  transport/tcp/tcp_transport.cpp)
