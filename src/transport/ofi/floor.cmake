# Other nodes through libfabric (a network plug-in, TSU_NET=ofi): reliable
# datagram endpoints (FI_EP_RDM) of the provider TSU_OFI_PROVIDER names.
tsu_transport(NAME ofi LIBS tsu_fabric_headers SOURCES
  transport/ofi/fabric_library.cpp
  transport/ofi/ofi_bulk.cpp
  transport/ofi/ofi_completions.cpp
  transport/ofi/ofi_liveness.cpp
  transport/ofi/ofi_memory.cpp
  transport/ofi/ofi_plugin.cpp
  transport/ofi/ofi_rma.cpp
  transport/ofi/ofi_send.cpp
  transport/ofi/ofi_setup.cpp
  transport/ofi/ofi_stats.cpp)
