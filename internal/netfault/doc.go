// Package netfault is a loopback TCP proxy that injects network faults for kmigrate's
// real-broker fault tests: the tools under test connect to the proxy, the proxy forwards to
// one broker port, and a test switches the proxy between modes.
//
// Modes:
//
//   - Pass: bytes are forwarded both ways as they come; half-closes are forwarded.
//   - Blackhole: a network that drops every packet without telling anyone. Open connections
//     stay open, nothing is forwarded in either direction and nobody gets a reset or a FIN
//     (a close by one side is held back like its data); new connections are accepted and held
//     without dialling the upstream. What the proxy has read and not yet written (at most one
//     buffer per direction) and what sits in the kernel's socket buffers is delivered when the
//     blackhole ends, as TCP's retransmissions would deliver it after a partition heals.
//   - Reset: every open connection is closed with a TCP reset (SO_LINGER 0) on both sides, and
//     connections accepted while the mode lasts are reset at once.
//
// Every fault is bounded: Blackhole and Reset take a duration (at most MaxFault) after which
// the proxy returns to Pass by itself, so a test that fails or forgets cannot leave a cluster
// cut off. A later fault replaces an earlier one, with its own duration; Pass ends any fault
// at once.
//
// Safety: the proxy listens on 127.0.0.1 only (a port the kernel picks) and refuses any
// upstream that is not a loopback address, so a fault never reaches a real network.
package netfault
