/** TPC-DS runs comparing shuffle managers. */
package io.memwire.tpcds;
