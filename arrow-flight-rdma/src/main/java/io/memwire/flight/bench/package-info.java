/** The Flight data-plane benchmark: gRPC DoGet against RDMA reads over the tcp provider. */
package io.memwire.flight.bench;
