/** Arrow Flight server wrapper and client that pull record-batch bodies with one-sided reads. */
package io.memwire.flight;
