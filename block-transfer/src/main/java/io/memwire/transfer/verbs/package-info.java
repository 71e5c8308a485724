/** The verbs provider: RDMA reads through DiSNI on InfiniBand, RoCE or iWARP. */
package io.memwire.transfer.verbs;
