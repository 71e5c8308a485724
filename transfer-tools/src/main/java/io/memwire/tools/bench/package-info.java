/**
 * The transfer benchmark ({@code mvn -B -q -pl transfer-tools exec:exec@bench}): one-sided read
 * throughput of a provider against plain blocking sockets doing the same request/response, measured
 * in one run on the same machine.
 */
package io.memwire.tools.bench;
