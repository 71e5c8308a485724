/**
 * The Flight data-plane benchmark: gRPC DoGet against RDMA reads over the tcp provider. It lives in
 * the test sources, so the Flight jar applications load does not carry it; run it with {@code mvn
 * -B -q -pl arrow-flight-rdma exec:exec@bench}.
 */
package io.memwire.flight.bench;
