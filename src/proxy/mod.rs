//! The fault-injecting proxy, in TCP and HTTP mode, generic over the
//! transport.
