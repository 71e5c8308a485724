/**
 * Programs behind {@code bin/memwire verbs-check}: they run on an RDMA host or inside the Soft-RoCE
 * guest and prove that Memwire's verbs provider carries the transport tests, Spark shuffles and
 * Flight streams, without leaking registrations. Each program writes {@code key=value} result lines
 * that {@code tools/verbs-check/verbs-check.sh} gathers into one verdict; nothing here runs in the
 * default test suite.
 */
package io.memwire.verbscheck;
