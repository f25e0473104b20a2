func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  %y = nnvm.relu %x : (tensor<2xf32>) -> 
