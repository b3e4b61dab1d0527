# The rank itself (header-only: its headers are compiled in the floor's view).
tsu_transport(NAME self)
