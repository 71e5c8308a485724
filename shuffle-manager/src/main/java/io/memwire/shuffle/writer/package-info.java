/** Map side: Spark's own writers, wrapped so finished outputs are registered and published. */
package io.memwire.shuffle.writer;
